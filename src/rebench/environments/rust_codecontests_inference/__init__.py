"""Scaffolding for Rust Codecontests: make a weak model write Rust that passes hidden tests."""
