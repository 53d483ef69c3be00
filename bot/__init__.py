"""mindie-help: diagnose MindIE errors from pasted logs and questions."""

__version__ = "0.1.0"
