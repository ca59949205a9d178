"""Shared language-model assets: the offline corpus (`corpus`), tokenizers (`tokenizer`),
uint16 token shards in a shared cache (`data`), a small GPT (`gpt`), its training loop and
evaluation (`train`) and weight import (`weights`).

Import the submodules directly; this package imports nothing heavy (tokenizers, tiktoken and
torch load only when a submodule that needs them is imported).
"""
