//! `--identity ID [--profile P]` of `explain` and `replay`: the caller a
//! call is decided for, as the HTTP front-end would establish it.

use crate::policy::auth::Identity;
use crate::Policy;

/// The identity `id` as `policy` sees it: with `profile` when one is given,
/// else with the profile of `policy`'s static token of that id (none for an
/// id no token has, such as a JWT identity: the active set).
pub(crate) fn identity_for(policy: &Policy, id: &str, profile: Option<&str>) -> Identity {
    let profile = match profile {
        Some(p) => Some(p.to_string()),
        None => policy
            .auth()
            .and_then(|a| a.tokens.iter().find(|t| t.id == id))
            .and_then(|t| t.profile.clone()),
    };
    Identity::new(id, profile)
}
