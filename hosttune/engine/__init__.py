"""The bundled AMP/DDP training engine (needs torch: extra `train`)."""
