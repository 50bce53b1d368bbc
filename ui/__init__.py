"""The front ends. Gradio (``app`` builds the Blocks, ``server`` serves them behind the login
guard): one module per tab (``writer``, ``history``, ``arena``, ``leaderboard``), each exposing
build(...) with the parts it uses, and the Writer's parts (``run_settings``, ``step_actions``,
``export_view``, ``presenting``), over pure render modules (``runview`` folds a run's events,
``run_html``, ``article_view``, ``diff``, ``runs_table``, ``render_arena``, ``escape``, ``controls``;
``style.css``). ``cli/``: the command line (argparse and printing), one module per subject."""
