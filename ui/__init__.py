"""The front ends. Gradio: one module per tab (``writer``, ``history``, ``arena``,
``leaderboard``), each exposing build(...) with the parts it uses, over pure render modules
(``runview`` folds a run's events, ``run_html``, ``article_view``, ``runs_table``,
``render_arena``, ``escape``; ``style.css``). ``cli/``: the command line (argparse and printing)."""
