"""The generated pages of the documentation, each written from the code it describes.

`python -m docgen --write` writes them into docs/, `python -m docgen --check` exits 1 naming any
page that differs from what the code gives (tests/test_docs.py holds every page to its generator).
Nothing here reads a page: the code is the source and the page its rendering. The rule map's page
is the fleet's own (`broker_sim.rule_map.page`) and is written here with the others.
"""
