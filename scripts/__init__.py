"""Research one-offs on finished runs and the shipped configs, run from the repository root as modules:
``python -m scripts.<name> ...`` (each imports only the package).
"""
