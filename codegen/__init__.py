"""Code generation: published JSON schemas → sealed attrs modules (``python -m codegen``).

The loaders modules are written by the runtime's own converter, so the runtime
this repository holds (``sdk/``) is the one imported here, whatever else is
installed.
"""

import sys
from pathlib import Path

_SDK = str(Path(__file__).resolve().parent.parent / "sdk")
if _SDK not in sys.path:
    sys.path.insert(0, _SDK)
