//! An agent's typing: shown to the visitor (the widget protocol's `typing` frame) and, as
//! "Ana is replying…", to the colleagues who have the conversation open. The second goes through
//! the inbox topic, to every agent's streams, so it is held to the pace the inbox script keeps (a
//! start at most every 3 s, a stop after it): a client posting typing in a loop (a bot calling the
//! API for every word it streams) would otherwise fill every stream's queue and drop them all into
//! a replay. Nothing is stored.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::hub::{Typist, VisitorEvent};
use crate::store::{ConversationId, UserId};

use super::conversation::{Agent, Chat};
use super::error::Error;

/// The shortest time between two starts of one agent in one conversation told to colleagues;
/// the page shows each for 6 s, so this keeps the line up while they type.
const START_EVERY: Duration = Duration::from_secs(2);
/// Past this many agents typing at once the gate forgets those quiet for a while.
const REMEMBERED: usize = 1024;
/// What "quiet for a while" is: a start older than this shows nowhere any more.
const FORGOTTEN_AFTER: Duration = Duration::from_secs(10);

/// Which agents' typing the colleagues were last told of, and when.
#[derive(Debug, Default)]
pub struct AgentTypingGate {
    started: Mutex<HashMap<(UserId, ConversationId), Instant>>,
}

impl AgentTypingGate {
    /// Whether colleagues are told of this signal at `now`: a start unless one was told less
    /// than [`START_EVERY`] ago; a stop only after a start they were told of.
    pub fn admit(
        &self,
        user: UserId,
        conversation: ConversationId,
        active: bool,
        now: Instant,
    ) -> bool {
        let mut started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (user, conversation);
        if !active {
            return started.remove(&key).is_some();
        }
        if started
            .get(&key)
            .is_some_and(|at| now.duration_since(*at) < START_EVERY)
        {
            return false;
        }
        if started.len() >= REMEMBERED {
            started.retain(|_, at| now.duration_since(*at) < FORGOTTEN_AFTER);
        }
        started.insert(key, now);
        true
    }
}

impl Chat {
    /// Shows (or hides) "agent is typing" to the visitor of a conversation, and "Ben is
    /// replying…" to the colleagues who have it open (at the gate's pace).
    pub async fn set_agent_typing(
        &self,
        conversation_id: ConversationId,
        agent: &Agent,
        active: bool,
    ) -> Result<(), Error> {
        let conversation = self.find_conversation(conversation_id).await?;
        let name: Arc<str> = agent.name.as_str().into();
        let event = VisitorEvent::Typing {
            agent_name: Arc::clone(&name),
            active,
        };
        self.hub
            .publish_to_visitor(conversation.visitor_id, &event, None);
        if let Some(user) = agent.user_id
            && self
                .agent_typing
                .admit(user, conversation_id, active, Instant::now())
        {
            let by = Typist::Agent { user, name };
            self.hub.publish_typing(conversation_id, by, active);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colleagues_hear_a_start_every_two_seconds_and_a_stop_after_one() {
        let gate = AgentTypingGate::default();
        let (ana, here, there) = (UserId(1), ConversationId(7), ConversationId(8));
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        assert!(
            !gate.admit(ana, here, false, at(0)),
            "a stop before any start"
        );
        assert!(gate.admit(ana, here, true, at(0)));
        assert!(!gate.admit(ana, here, true, at(500)), "a loop of starts");
        assert!(!gate.admit(ana, here, true, at(1_900)));
        assert!(
            gate.admit(ana, there, true, at(1_900)),
            "another conversation"
        );
        assert!(gate.admit(ana, here, true, at(2_000)));
        assert!(gate.admit(ana, here, false, at(2_100)));
        assert!(!gate.admit(ana, here, false, at(2_200)), "one stop a start");
        assert!(
            gate.admit(ana, here, true, at(2_300)),
            "a start after a stop"
        );
    }

    #[test]
    fn many_agents_are_remembered_only_while_their_typing_can_show() {
        let gate = AgentTypingGate::default();
        let t0 = Instant::now();
        for i in 0..REMEMBERED {
            let user = UserId(i64::try_from(i).expect("small"));
            assert!(gate.admit(user, ConversationId(1), true, t0));
        }
        let later = t0 + FORGOTTEN_AFTER;
        assert!(gate.admit(UserId(-1), ConversationId(1), true, later));
        let kept = gate
            .started
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        assert_eq!(kept, 1, "the quiet ones were forgotten");
    }
}
