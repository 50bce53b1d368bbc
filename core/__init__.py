"""What writes the text: the runner (stores each event of a run as it happens), the LLM client,
the client factories, batch runs, one module per paper's method (``methods/``), and three rooms:
``retrieval/`` (finding sources), ``text/`` (talking to the model safely) and ``article/`` (the
article as it leaves the house). Nothing here imports gradio."""
