// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.20;

/// Test contract: forwards the ETH it is sent to another address through an internal
/// call, as a smart-contract wallet, a Safe or a payment router does. A deposit made
/// this way is no top-level transaction to the recipient (see docs/indexer.md).
contract Forwarder {
    /// Send all of msg.value to `to`; reverts if the transfer fails.
    function forward(address payable to) external payable {
        (bool ok, ) = to.call{value: msg.value}("");
        require(ok, "forward failed");
    }

}
