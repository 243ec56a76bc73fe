// The std::cerr that libsentencepiece writes its log lines to, inside the module.
//
// libunitrain opens the module with RTLD_DEEPBIND (sentencepiece_module.h says why), so
// libsentencepiece binds std::cerr in the module's own scope first: to libstdc++'s storage for
// it. But a program whose executable uses std::cerr holds its own copy of the object (a copy
// relocation), and only that copy is constructed at start-up; libstdc++'s storage stays zeroed,
// and the first warning SentencePiece logs (e.g. bpe's "No valid symbol found") crashed the
// process. The module therefore defines the symbol itself, first in that scope: a stream on C's
// stderr, which every copy of the standard streams writes through (sync_with_stdio's default),
// so lines keep their order. This file includes no <iostream>: it must not declare std::cerr.
#include <cstdio>
#include <ext/stdio_sync_filebuf.h>
#include <ostream>

namespace {
__gnu_cxx::stdio_sync_filebuf<char> stderr_buffer(stderr);
}  // namespace

__attribute__((visibility("default")))
std::ostream sentencepiece_cerr __asm__("_ZSt4cerr")(&stderr_buffer);
