"""`python -m broker_sim.rule_map [--write]`: print the rule map's page, or write it into docs/."""

import sys

from .page import main

sys.exit(main(sys.argv[1:]))
