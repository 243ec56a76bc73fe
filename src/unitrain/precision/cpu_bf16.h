#pragma once
// What bfloat16 costs on this CPU: CPUs without bfloat16 instructions (AVX-512 BF16, AMX)
// emulate its products, which can make `train.precision: bf16-mixed` several times slower than
// fp32 (a 63M-parameter transformer_lm on a 2-core AMD EPYC with AVX2 only: ~110 s a step
// against ~15 s, issue 48); nothing else says so.
#include <c10/core/DeviceType.h>

#include <string>

#include "unitrain/precision/precision_mode.h"

namespace unitrain {

/// The bfloat16 instructions /proc/cpuinfo's flags name ("avx512_bf16", "amx_bf16"), joined
/// by ", "; "" when it names none (or cannot be read).
std::string cpu_bf16_flags();

/// The line a run with bf16-mixed on the CPU prints at start, from what a 256x256 product
/// took in float32 and in bfloat16 (seconds, the fastest of a few) and the CPU's bf16 flags;
/// `slower` is set when bfloat16 took over 1.5x float32's time: the line is then a warning
/// that suggests fp32.
std::string cpu_bf16_note(const std::string& flags, double fp32_seconds, double bf16_seconds,
                          bool* slower);

/// Measures those products on this process's threads (~10 ms) and returns cpu_bf16_note's
/// line.
std::string measure_cpu_bf16(bool* slower);

/// For a run in `mode` on `device`: with bf16 (mixed or true) on the CPU, measure_cpu_bf16's
/// line, a warning when bfloat16 is slower; nothing otherwise.
void say_cpu_bf16_cost(PrecisionMode mode, c10::DeviceType device);

}  // namespace unitrain
