"""Gradio front end: one module per tab, each exposing build(...) with the parts it uses."""
