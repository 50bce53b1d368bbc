"""The annotator's side of the arena (``arena.Arena``, ``pairing``); see ``annotation``."""
