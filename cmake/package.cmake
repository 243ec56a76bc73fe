# `cpack -G DEB` in the build folder (or `cmake --build build --target package`) makes
# unitrain_<version>_amd64.deb: one package with everything `cmake --install` installs (the command,
# the library, the headers, the CMake and pkg-config files), under /usr.
set(CPACK_PACKAGE_NAME unitrain)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "generic trainer for LibTorch models: the unitrain command, its library and headers")
set(CPACK_PACKAGE_CONTACT "unitrain developers <unitrain@localhost>")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
# dpkg-shlibdeps turns the libraries the binaries link into Depends (libtorch1.13, libyaml-cpp0.7,
# libfmt9, libspdlog1.10, libisal2, zlib1g, libgomp1, libc6, libpcre2-8-0 and libutf8proc2 for
# tokenizer.json, ...).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Not a link dependency: LibTorch calls the system BLAS, and OpenBLAS is ~30x faster than the
# reference BLAS on matrix products.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libopenblas0-openmp")
# Building against the headers (find_package(unitrain), pkg-config) needs these.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libtorch-dev, libfmt-dev, libyaml-cpp-dev")
include(CPack)
