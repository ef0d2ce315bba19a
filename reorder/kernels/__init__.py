"""Layer 2: the Python side of each kernel family (what it accepts, how it binds its compiled
runner, its tuning constants) and the shared problem types the planner hands them."""
