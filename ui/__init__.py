"""Gradio front end: one module per tab, each exposing build(services)."""
