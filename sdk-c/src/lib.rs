//! `dst-c`: will build `libdst.so`, `libdst.a` and `include/dst.h`, the C and
//! C++ face of the `dst` SDK (one implementation of the decision stream and the
//! region, wrapped), with the `dst_catalog` ELF section and the fork server.
//! Nothing is implemented yet: see the libdst issue.
