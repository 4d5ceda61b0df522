"""The checks, one module per group; the catalogue in hosttune.doctor.catalogue lists them in order."""
