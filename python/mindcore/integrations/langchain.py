"""LangChain on mindcore (``pip install 'mindcore[langchain]'``).

- :class:`MindcoreChatMessageHistory`: LangChain's ``BaseChatMessageHistory`` over a context
  session, so ``RunnableWithMessageHistory`` (or any code written against a chat history) keeps
  its conversations in a mindcore store, shared by every process that opens it.
- :class:`MindcoreRetriever`: a ``BaseRetriever`` over a user's long-term memory: hybrid recall
  (vector and BM25) in that user's scope, each memory a ``Document``.

>>> import mindcore
>>> from langchain_core.messages import AIMessage, HumanMessage
>>> history = MindcoreChatMessageHistory.open("memory://langchain-doc", "chat-1")
>>> history.add_messages([HumanMessage("Hi, I am Ada."), AIMessage("Hello Ada!")])
>>> [(type(m).__name__, m.content) for m in history.messages]
[('HumanMessage', 'Hi, I am Ada.'), ('AIMessage', 'Hello Ada!')]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, convert_to_messages, convert_to_openai_messages
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from mindcore.context import Context, Session
from mindcore.errors import InvalidInputError, InvalidTypeError
from mindcore.ltm import LongTermMemory, Memory
from mindcore.store import Store

__all__ = ["MindcoreChatMessageHistory", "MindcoreRetriever"]

#: Messages read per page when the whole history is read.
_PAGE = 1000


class MindcoreChatMessageHistory(BaseChatMessageHistory):
    """A LangChain chat history kept in a mindcore context session (``Context.session``).

    Messages are stored as OpenAI chat messages: system, human, AI (with its tool calls) and tool
    messages come back as the same LangChain types with the same content, tool calls and tool
    call ids; LangChain-only fields (``additional_kwargs``, ``response_metadata``, message ids)
    are not kept, and a message with image or file parts is refused, naming the part. Every text
    goes through the context's secret policy: a credential raises
    :class:`~mindcore.errors.SecretRefusedError` and nothing of that call is stored.
    """

    def __init__(self, session: Session) -> None:
        if not isinstance(session, Session):
            raise InvalidTypeError(f"session: expected a mindcore context Session, got {type(session).__name__}")
        self.session = session

    @classmethod
    def open(
        cls, store: Store | str, session_id: str, *, dataset: str = "default", namespace: str = "default"
    ) -> MindcoreChatMessageHistory:
        """The history of session ``session_id`` of ``dataset`` in the store at ``store`` (a
        :class:`~mindcore.store.Store`, a folder, ``s3://...`` or ``memory://name``)."""
        return cls(Context(store, dataset=dataset).session(session_id, namespace))

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]  # a property, as LangChain documents
        """Every message of the session, oldest first."""
        rows: list[dict[str, Any]] = []
        after = 0
        while True:
            page = self.session.get_messages(limit=_PAGE, after_seq=after)
            rows += [dict(m) for m in page.messages]
            if len(page.messages) < _PAGE:
                break
            after = page.messages[-1].seq
        return list(convert_to_messages(rows))

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append ``messages`` in one commit (all or none)."""
        items = list(messages)
        for i, message in enumerate(items):
            if not isinstance(message, BaseMessage):
                raise InvalidInputError(f"messages[{i}]: expected a LangChain message, got {type(message).__name__}")
        if items:
            self.session.append(convert_to_openai_messages(items))

    def clear(self) -> None:
        """Delete every message of the session."""
        self.session.clear()

    def close(self) -> None:
        """Close the session's context (and its store, when :meth:`open` opened it)."""
        self.session.ctx.close()


class MindcoreRetriever(BaseRetriever):
    """A LangChain retriever over a user's :class:`~mindcore.ltm.LongTermMemory`: the ``k`` best
    memories for the query (hybrid recall: vector similarity, BM25, recency and importance), each
    a ``Document`` whose ``page_content`` is the memory's text and whose ``metadata`` holds its
    ``id``, ``kind``, ``importance``, ``created_at``, ``score`` and ``similarity``.

    The memory's scope (``user_id``, ``namespace``) is the retriever's: one user's retriever
    never returns another user's memories.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: LongTermMemory
    k: int = 5

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [_document(m) for m in self.memory.recall(query, self.k)]


def _document(memory: Memory) -> Document:
    metadata = {
        "id": memory.id, "kind": memory.kind, "importance": memory.importance, "created_at": memory.created_at,
        "score": memory.score, "similarity": memory.similarity, "source": memory.source,
    }
    return Document(page_content=memory.text, metadata=metadata, id=memory.id)
