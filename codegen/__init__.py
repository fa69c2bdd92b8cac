"""Code generation: published JSON schemas → sealed attrs modules (``python -m codegen``)."""
