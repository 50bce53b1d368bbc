"""The bottom layer: value types, events, errors and settings that every package shares.
Standard library only; it imports nothing of the project above it."""
