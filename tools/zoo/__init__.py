"""The model zoo runner (python -m tools.zoo; docs/model_zoo.md)."""
