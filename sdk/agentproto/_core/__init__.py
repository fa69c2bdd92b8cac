"""Shared runtime: errors, diagnostics, the UNSET sentinel, JSON, patches, codecs."""
