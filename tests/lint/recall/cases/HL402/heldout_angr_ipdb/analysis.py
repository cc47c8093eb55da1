# case: HL402 real https://github.com/angr/angr/pull/3673
# Held out. Debugger entry points left in code paths the maintainers meant to be
# unreachable; the PR removed them.
def successors(state, engine):
    try:
        return engine.process(state)
    except KeyError:
        import ipdb; ipdb.set_trace()  # expect: HL402
        raise
