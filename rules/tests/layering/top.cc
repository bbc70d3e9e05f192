#include "rules/tests/layering/bottom.h"
#include "rules/tests/layering/middle.h"

int top_value() { return bottom_value() + middle_value(); }
