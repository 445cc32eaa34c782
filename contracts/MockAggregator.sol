// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.20;

/// @title MockAggregator
/// @notice A Chainlink-style feed (the reads of AggregatorV3Interface) for local chains and
///         tests, whose rounds anyone may set: it has no value. It serves as a price feed
///         (answer: USD with `decimals` places) and as an L2 sequencer uptime feed (answer 0:
///         up, 1: down; startedAt: when the status last changed).
/// @dev Works from zeroed storage, so it can be placed at a fixed address with
///      anvil_setCode (no constructor). While `live`, latestRoundData reports the current
///      block's timestamp as updatedAt: a feed whose heartbeat never lapses (the dev stack).
///      setRoundData stops that, so a test sees exactly the round it set.
contract MockAggregator {
    uint8 public decimals;
    bool public live;
    uint80 private _roundId;
    int256 private _answer;
    uint256 private _startedAt;
    uint256 private _updatedAt;
    uint80 private _answeredInRound;

    string public constant description = "intentd mock aggregator";
    uint256 public constant version = 4;

    /// @dev Chainlink's AggregatorInterface events, so explorers and indexers see updates.
    event AnswerUpdated(int256 indexed current, uint256 indexed roundId, uint256 updatedAt);
    event NewRound(uint256 indexed roundId, address indexed startedBy, uint256 startedAt);

    error NoDataPresent();

    /// @notice Set decimals and liveness, and publish `answer` as a new round.
    function configure(uint8 decimals_, int256 answer, bool live_) external {
        decimals = decimals_;
        live = live_;
        setAnswer(answer);
    }

    /// @notice Publish `answer` as a new, complete round at this block's time.
    function setAnswer(int256 answer) public {
        _publish(_roundId + 1, answer, block.timestamp, block.timestamp);
    }

    /// @notice Publish a sequencer status (0 up, 1 down) that changed at `since` (unix
    ///         seconds); updatedAt is this block's time.
    function setStatus(int256 status, uint256 since) external {
        _publish(_roundId + 1, status, since, block.timestamp);
    }

    /// @notice Set the latest round exactly as given (stale, incomplete, from the future)
    ///         and stop reporting the block's time.
    function setRoundData(
        uint80 roundId,
        int256 answer,
        uint256 startedAt,
        uint256 updatedAt,
        uint80 answeredInRound
    ) external {
        live = false;
        _roundId = roundId;
        _answer = answer;
        _startedAt = startedAt;
        _updatedAt = updatedAt;
        _answeredInRound = answeredInRound;
        emit AnswerUpdated(answer, roundId, updatedAt);
    }

    /// @notice Whether latestRoundData reports the current block's timestamp as updatedAt.
    function setLive(bool live_) external {
        live = live_;
    }

    function latestRoundData()
        external
        view
        returns (
            uint80 roundId,
            int256 answer,
            uint256 startedAt,
            uint256 updatedAt,
            uint80 answeredInRound
        )
    {
        return (
            _roundId,
            _answer,
            _startedAt,
            live ? block.timestamp : _updatedAt,
            _answeredInRound
        );
    }

    function latestAnswer() external view returns (int256) {
        return _answer;
    }

    function latestRound() external view returns (uint256) {
        return _roundId;
    }

    /// @notice Only the latest round is kept; an older one reverts as Chainlink's does
    ///         for a round it has no data of.
    function getRoundData(uint80 roundId)
        external
        view
        returns (uint80, int256, uint256, uint256, uint80)
    {
        if (roundId != _roundId || _roundId == 0) revert NoDataPresent();
        return (
            _roundId,
            _answer,
            _startedAt,
            live ? block.timestamp : _updatedAt,
            _answeredInRound
        );
    }

    function _publish(uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt)
        private
    {
        _roundId = roundId;
        _answer = answer;
        _startedAt = startedAt;
        _updatedAt = updatedAt;
        _answeredInRound = roundId;
        emit NewRound(roundId, msg.sender, startedAt);
        emit AnswerUpdated(answer, roundId, updatedAt);
    }
}
