"""`ken hook EVENT`: the agents' hooks. Standard library and a few kenning modules only."""
