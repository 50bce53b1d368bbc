"""The front ends. Gradio (``app`` builds the Blocks, ``server`` serves them behind the login
guard): one module per tab (``writer``, ``history``, ``arena``, ``leaderboard``), each exposing
build(...) with the parts it uses, and the Writer's parts (``run_settings``, ``run_inputs``,
``draft_editor``, ``article_panel``, ``step_actions``, ``step_acting``, ``export_view``, ``presenting``;
``listeners``: how every event is bound), over pure render modules (``runview`` folds a run's events,
``run_html``, ``article_view``, ``diff``, ``runs_table``, ``render_arena``, ``escape``, ``controls``;
``style.css``). ``cli/``: the command line (argparse and printing), one module per subject.

Importing ``ui`` first installs ``gradio_start``'s import hook: Gradio then imports without the
parts this app never uses (its components' type stubs, its IPython magic)."""

from ui.gradio_start import skip_unused_imports

skip_unused_imports()
