"""What writes the text: the runner (stores each event of a run as it happens), ``live`` (the
server's runs, followed by any number of pages), the LLM client, the client factories, batch
runs, ``authoring`` (the author's actions on an article, each a version with its citations bound
to their pages), AAG's procedure memory, one module per paper's method (``methods/``), and three
rooms: ``retrieval/`` (finding sources), ``text/`` (talking to the model safely) and ``article/``
(the article as it leaves the house). Nothing here imports gradio."""
