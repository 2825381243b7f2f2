//! MCP sessions over HTTP, bounded: rmcp's `LocalSessionManager` keeps every session until it is closed or
//! idles out (and its handle after that), so a client that sends `initialize` in a loop would grow the
//! server without end. This wrapper keeps at most a fixed number: a new session past it closes the one used
//! least recently, whose client gets "session not found" and starts a new one, as MCP clients do.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};

/// [`LocalSessionManager`] with at most `max` sessions.
pub(super) struct BoundedSessions {
    inner: LocalSessionManager,
    max: usize,
    /// When each live session was last used.
    used: Mutex<HashMap<SessionId, Instant>>,
}

impl BoundedSessions {
    pub(super) fn new(inner: LocalSessionManager, max: usize) -> BoundedSessions {
        BoundedSessions { inner, max: max.max(1), used: Mutex::new(HashMap::new()) }
    }

    fn used(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Instant>> {
        self.used.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn touch(&self, id: &SessionId) {
        if let Some(used) = self.used().get_mut(id) {
            *used = Instant::now();
        }
    }

    /// The least recently used sessions past `max - 1`, taken out of the record, for a new one to fit.
    fn evicted(&self) -> Vec<SessionId> {
        let mut used = self.used();
        let mut evicted = Vec::new();
        while used.len() >= self.max {
            let Some(oldest) = used.iter().min_by_key(|(_, at)| **at).map(|(id, _)| id.clone()) else { break };
            used.remove(&oldest);
            evicted.push(oldest);
        }
        evicted
    }

    #[cfg(test)]
    fn live(&self) -> usize {
        self.used().len()
    }
}

impl SessionManager for BoundedSessions {
    type Error = <LocalSessionManager as SessionManager>::Error;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        for id in self.evicted() {
            // A session that already ended is closed all the same; its handle leaves the map.
            let _ = self.inner.close_session(&id).await;
        }
        let (id, transport) = self.inner.create_session().await?;
        self.used().insert(id.clone(), Instant::now());
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        if !self.used().contains_key(id) {
            return Ok(false);
        }
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.used().remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.touch(id);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.resume(id, last_event_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_session_past_the_bound_closes_the_least_recently_used() {
        let sessions = BoundedSessions::new(LocalSessionManager::default(), 3);
        let mut ids = Vec::new();
        for _ in 0..3 {
            ids.push(sessions.create_session().await.unwrap().0);
        }
        // The first is used again: the second is now the least recently used.
        std::thread::sleep(std::time::Duration::from_millis(2));
        sessions.touch(&ids[0]);
        let newest = sessions.create_session().await.unwrap().0;
        assert_eq!(sessions.live(), 3);
        assert!(!sessions.has_session(&ids[1]).await.unwrap(), "the least recently used was closed");
        assert!(!sessions.inner.sessions.read().await.contains_key(&ids[1]), "and its handle dropped");
        for id in [&ids[0], &ids[2], &newest] {
            assert!(sessions.has_session(id).await.unwrap());
        }
        for _ in 0..50 {
            sessions.create_session().await.unwrap();
        }
        assert_eq!(sessions.live(), 3);
        assert_eq!(sessions.inner.sessions.read().await.len(), 3);
    }
}
