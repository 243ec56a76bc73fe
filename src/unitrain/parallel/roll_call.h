#pragma once
// The roll call before the ranks form their group: each rank writes the world size its
// launcher gave it, and its host, under `unitrain_roll/<rank>` in the rendezvous store, and
// reads the others' as they arrive. Gloo alone would wait out the whole timeout for a rank
// started with another world size (one that never comes, or one that waits for ranks that never
// come); the roll call names the disagreement as soon as both ranks have arrived.
#include <chrono>
#include <functional>
#include <string>

#include "unitrain/parallel/c10d_fwd.h"

namespace unitrain {

struct DistEnv;

/// Returns once every rank of this world has arrived with the same world size. TrainError:
/// a rank arrived with another world size (naming both ranks, their hosts and the launcher's
/// variable), or this rank's number is outside the world rank 0 was started for, or ranks had
/// not arrived when `timeout` passed (naming them). `waiting(note)` is called once, after
/// `note_after`, while ranks are still missing (the run's log).
void roll_call(c10d::Store& store, const DistEnv& env, const std::string& host,
               std::chrono::milliseconds timeout,
               const std::function<void(const std::string&)>& waiting,
               std::chrono::milliseconds note_after = std::chrono::seconds(30));

}  // namespace unitrain
