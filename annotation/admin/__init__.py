"""The study admin's work (``admin.Admin``, the judge, records, datasets); see ``annotation``."""
