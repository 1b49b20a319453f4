"""The doctor: is this machine ready to train, and if not, what to fix.

``envcheck`` and its helpers (``os_info``, ``gpus``, ``gpu_windows``, ``gpu_linux``,
``drivers``, ``bounded``) use the standard library only: the project generator's hook imports
``envcheck`` from the freshly written ``src/`` before any environment exists.
``verify_install`` adds the torch checks (``stepwise`` names the step a GPU fails);
``reports`` summarises a room's ``--json`` reports.
"""
