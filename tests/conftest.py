from __future__ import annotations

import os

# The suite must not depend on what else is installed in the environment.
os.environ.setdefault("BATCHSCHED_DISABLE_PLUGIN_AUTOLOAD", "1")
