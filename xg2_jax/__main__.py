"""``python -m xg2_jax`` runs the command line."""

import sys

from xg2_jax._src.cli import main

sys.exit(main())
