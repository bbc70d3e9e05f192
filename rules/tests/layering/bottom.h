#pragma once

inline int bottom_value() { return 1; }
