"""Everything that writes text: settings, errors, LLM client, prompts, search, fetching,
passages, events, methods and the runner. Nothing here imports gradio."""
