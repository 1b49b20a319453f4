"""The doctor: is this machine ready to train, and if not, what to fix. A package of its own,
standard library only, that imports nothing of the project's package (only the checkup's probes
load the project's model and training step, by the name project.json gives). The project's
package imports nothing of it either, but for its command, ``<package>.verify_install``.

One direction: ``facts`` (gathered once by ``os_info``, ``dxgi``, ``sysfs``,
``amd_linux``, ``driver_age``, ``builds``, within ``bounded`` time) -> ``rules/`` (one module per
subject; each rule holds its condition, wording, fix and code) -> ``probes`` with torch (and
``stepwise``, which names the step a GPU fails) -> ``verdict`` (the report: verdict, exit code,
JSON) -> ``render`` (text, Markdown). ``envcheck`` runs the standard-library part: the project
generator's hook imports it from the freshly written ``src/`` before any environment exists.
``checkup`` runs all of it (``python -m <package>.verify_install``). The instructor's tools (the
workshop stick, the room's summary) are not here: they are the project's ``instructor.pyz``.
"""
