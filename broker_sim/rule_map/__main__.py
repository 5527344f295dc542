"""`python -m broker_sim.rule_map`: print the rule map's page (`python -m docgen --write` writes it)."""

import sys

from .page import main

sys.exit(main(sys.argv[1:]))
