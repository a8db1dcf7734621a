//! `dst-fuzz-targets`: will hold the project's own fuzz targets (the region
//! validator, the decision decoder, the campaign loader), run with dst's own
//! explorer. Nothing is implemented yet: see the explorer issue.
