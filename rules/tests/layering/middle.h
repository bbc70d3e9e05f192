#pragma once

#include "rules/tests/layering/bottom.h"

inline int middle_value() { return bottom_value() + 1; }
