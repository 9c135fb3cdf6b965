//! The shared executor: Pi's tool pipeline around the policy.
