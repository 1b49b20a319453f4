"""A room's ``verify_install --json`` reports: read safely (``saved_reports``), one ``Machine``
per report (``machines``), summarised as text or Markdown (``summary``):
``python instructor.pyz room FOLDER``."""
