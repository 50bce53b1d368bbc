"""The article as it leaves the house: one ``Article`` value (``article``) built from a run's
events or an author's edits (``edits``), its sources (``sources``) and citations (``citations``),
written as Markdown (``markdown``), Word (``docx``), PDF (``pdf``) or one HTML page (``html``),
the last two reading its body with ``blocks``. Never imports core.retrieval."""
