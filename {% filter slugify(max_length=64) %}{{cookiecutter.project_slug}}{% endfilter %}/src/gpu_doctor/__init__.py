"""The doctor: is this machine ready to train, and if not, what to fix.

One direction: ``facts`` (gathered once by ``os_info``, ``gpu_windows``, ``gpu_linux``,
``amd_linux``, ``drivers``, ``builds``, within ``bounded`` time) -> ``rules/`` (one module per
subject; each rule holds its condition, wording, fix and code) -> ``probes`` with torch (and
``stepwise``, which names the step a GPU fails) -> ``report`` (verdict, exit code, JSON) ->
``render`` (text, Markdown). ``envcheck`` runs the standard-library part: the project
generator's hook imports it from the freshly written ``src/`` before any environment exists.
``verify_install`` runs all of it; ``reports`` summarises a room's ``--json`` reports.
"""
