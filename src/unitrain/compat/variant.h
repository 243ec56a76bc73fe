#pragma once
// torch::nn's options hold c10::variant in LibTorch 1.x and std::variant in 2.x (c10's own
// variant is gone): torch_variant::get_if and holds_alternative read them in either.
#if __has_include(<c10/util/variant.h>)
#include <c10/util/variant.h>
namespace unitrain::torch_variant {
using c10::get_if;
using c10::holds_alternative;
}  // namespace unitrain::torch_variant
#else
#include <variant>
namespace unitrain::torch_variant {
using std::get_if;
using std::holds_alternative;
}  // namespace unitrain::torch_variant
#endif
