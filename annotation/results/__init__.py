"""What the votes say (``results.Results``, ratings, style control, flags, agreement); see ``annotation``."""
