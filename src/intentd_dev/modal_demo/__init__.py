"""``make modal-demo``: a demo merchant shop paying through intentd's payment modal.

Development tooling only (the local anvil chains): see ``merchant`` for the shop and
``__main__`` for what the make target starts.
"""
