"""The article as it leaves the house: one ``Article`` value (``article``) built from a run's
events or an author's edits (``edits``), its sources (``sources``) and citations (``citations``),
written as Markdown (``markdown``) or Word (``docx``). Never imports core.retrieval."""
