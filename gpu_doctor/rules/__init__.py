"""The doctor's rules, one module per subject; each rule is a function of the facts that holds
its condition, its wording, its fix and its code, and each module declares its codes (``CODES``)
beside the functions that give them. ``codes.CODES`` is their union, in the order below, and
docs/report.md lists them in the same order.
"""
