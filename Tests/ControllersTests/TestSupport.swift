import Controllers
import Foundation
import ObjectGraph
import PropertyList
import Synchronization
import Testing
