"""Finding sources: search providers (``search``), fetching pages behind an SSRF guard
(``fetch``, ``netguard``), extracting their main text (``extract``), the author's local files
(``corpus``), passages split, ranked and chosen within a budget (``passages``), and the retrieve
pipeline a method calls (``pipeline``). Never imports core.methods."""
