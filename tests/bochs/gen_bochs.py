"""Random machines for the Bochs run (a stub replaced below)."""
def random_machine(rng, k):
    raise NotImplementedError
